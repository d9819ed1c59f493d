"""Stage 2, `text`: plan and fetch each paper's URLs (`fetch/`), extract text from landing
pages and PDFs (`extract/`), choose title and abstract (`documents`), detect the language
(`language`) -> `OUT/fetch/`, `OUT/documents/`, `OUT/warc/`."""
