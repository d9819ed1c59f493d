"""Column-by-column definitions of the build's Parquet tables (README, "What a build produces")."""

import pyarrow as pa

# One OA location of a paper, ranked for fetching (rank 0 is tried first).
URL_STRUCT = pa.struct(
    [
        ("url", pa.string()),
        ("kind", pa.string()),  # "pdf" or "landing"
        ("host_type", pa.string()),  # "publisher" / "repository" / null
        ("license", pa.string()),
        ("version", pa.string()),  # publishedVersion / acceptedVersion / submittedVersion
        ("source", pa.string()),  # which metadata source listed it
        ("rank", pa.int32()),
    ]
)

# A Crossref `relation` entry reduced to what splitting needs (versions of one work).
RELATION_STRUCT = pa.struct([("type", pa.string()), ("doi", pa.string())])

# One abstract of a document (documents.abstracts): text, CLD3 language, where it came from.
ABSTRACT_STRUCT = pa.struct([("text", pa.string()), ("language", pa.string()), ("source", pa.string())])

PAPERS = pa.schema(
    [
        ("doi", pa.string()),
        ("title", pa.string()),
        ("title_source", pa.string()),
        # every title the metadata lists (Crossref `title` + `original-title`, cleaned): a
        # paper's title in a second language feeds the cross-lingual trainer export
        ("titles", pa.list_(pa.string())),
        ("abstract", pa.string()),
        ("abstract_source", pa.string()),
        ("venue", pa.string()),
        ("publisher", pa.string()),
        ("year", pa.int32()),
        ("type", pa.string()),
        ("categories", pa.list_(pa.string())),
        ("publisher_language", pa.string()),
        ("license", pa.string()),
        ("is_oa", pa.bool_()),
        ("urls", pa.list_(URL_STRUCT)),
        ("relations", pa.list_(RELATION_STRUCT)),
        ("sources", pa.list_(pa.string())),
        ("n_records", pa.int32()),  # source records merged into this row (duplicates incl.)
        # why the record is not a paper (papers/paratext.py): test_doi, issue, component,
        # front_matter, table_of_contents, index, erratum; null for a paper. Flagged, not dropped
        ("paratext", pa.string()),
    ]
)

FETCH = pa.schema(
    [
        ("url", pa.string()),
        ("doi", pa.string()),
        ("kind", pa.string()),  # pdf / landing / citation_pdf
        ("status", pa.int32()),  # HTTP status; null when no response
        ("content_type", pa.string()),
        ("bytes", pa.int64()),
        ("sha1", pa.string()),
        # where the response's record is: the WARC file (OUT/warc/ of a live fetch, the given
        # archive of a replay; `local:` names the file read, without offset and length), its
        # byte offset and its length in bytes (one gzip member in a .warc.gz), so that the
        # range [offset, offset + length) reads it alone (a WARC gzipped as one stream, not
        # per record, has no such range: offset and length are in its inflated bytes, where
        # `warc_store.read_record` reads them); a Common Crawl index row without a usable
        # length gives none; null when no record was read
        ("warc_file", pa.string()),
        ("warc_offset", pa.int64()),
        ("warc_length", pa.int64()),
        ("fetched_at", pa.string()),
        ("attempts", pa.int32()),
        ("error", pa.string()),  # null on success; a short reason otherwise
    ]
)

DOCUMENTS = pa.schema(
    [
        ("doi", pa.string()),
        ("title", pa.string()),
        ("abstract", pa.string()),
        # every abstract the paper carries (metadata, page, PDF), each with its detected
        # language and source; `abstract` is the one in the paper's own language
        ("abstracts", pa.list_(ABSTRACT_STRUCT)),
        ("content", pa.string()),
        ("language", pa.string()),
        ("language_prob", pa.float32()),
        ("language_reliable", pa.bool_()),
        ("publisher_language", pa.string()),
        ("title_source", pa.string()),
        ("abstract_source", pa.string()),
        ("content_source", pa.string()),
        ("text_source", pa.string()),  # where the kept text came from overall
        # evidence and provenance (text/documents.py): the rule that produced the kept title
        # ("metadata", or the extractor's: "citation_title", "largest_font") and abstract
        # ("metadata", "citation_abstract", "abstract_heading:Resumo", "unlabelled" ...), the
        # rule of each `abstracts` entry (same order), and how well the fetched pages / PDFs
        # agree with the metadata title (1.0: printed in them; null: no metadata title or
        # nothing fetched); a document that is another text is not used (`title_mismatch`)
        ("title_rule", pa.string()),
        ("abstract_rule", pa.string()),
        ("abstract_rules", pa.list_(pa.string())),
        ("title_match", pa.float32()),
        ("n_tokens_title", pa.int32()),
        ("n_tokens_abstract", pa.int32()),
        ("n_tokens_content", pa.int32()),
        ("year", pa.int32()),
        ("venue", pa.string()),
        ("type", pa.string()),
        ("categories", pa.list_(pa.string())),
        ("relations", pa.list_(RELATION_STRUCT)),
    ]
)

CITATIONS = pa.schema(
    [
        ("citing_doi", pa.string()),
        ("cited_doi", pa.string()),
        # hashing.hash64(doi): the same int64 key as splits.paper_id, so the pairs stage
        # shuffles and joins on integers and never on DOI strings. Nullable: builds written
        # before these columns existed get them computed by the pairs stage.
        ("citing_id", pa.int64()),
        ("cited_id", pa.int64()),
    ]
)

SPLITS = pa.schema(
    [
        ("doi", pa.string()),
        ("paper_id", pa.int64()),  # compact key used in the pair shuffles
        ("split", pa.string()),  # train / idt / odt
        ("language", pa.string()),
        ("group", pa.string()),  # the version / duplicate group that decided the split
    ]
)

PAIRS = pa.schema(
    [
        ("doi_a", pa.string()),
        ("doi_b", pa.string()),
        ("lang_a", pa.string()),
        ("lang_b", pa.string()),
        ("lang_class", pa.string()),  # en-en / en-xx / xx-en / xx-xx
        ("support", pa.int64()),
    ]
)

# Specter-style hard negatives (`pairs --hard-negatives N`): anchor A cites positive B, B
# cites negative C, A does not cite C; A, B, C in one split (the folder's).
NEGATIVES = pa.schema(
    [
        ("anchor_doi", pa.string()),
        ("positive_doi", pa.string()),
        ("negative_doi", pa.string()),
        ("lang_anchor", pa.string()),
        ("lang_positive", pa.string()),
        ("lang_negative", pa.string()),
    ]
)

# Relation mixes (`pairs --mixes`): unordered pairs, doi_a < doi_b, with the full support of
# each relation (DC: number of citation directions, 0-2; 0 = not in that relation).
MIXES = pa.schema(
    [
        ("doi_a", pa.string()),
        ("doi_b", pa.string()),
        ("lang_a", pa.string()),
        ("lang_b", pa.string()),
        ("lang_class", pa.string()),
        ("support_dc", pa.int64()),
        ("support_cc", pa.int64()),
        ("support_bc", pa.int64()),
    ]
)

# `enrich` (optional, after text): one row per non-English paper given an English summary,
# as the OpenMSD paper's best model: text = `Title: {title}. Abstract: ({summary}) {abstract}`.
ENRICHED = pa.schema(
    [
        ("doi", pa.string()),
        ("language", pa.string()),  # the document's language (never "en": English is not enriched)
        ("summary", pa.string()),  # the checked English summary, cut to n_tokens
        ("summarizer", pa.string()),  # chat / translate / ctranslate2
        ("prompt_id", pa.string()),  # e.g. summary30@<hash of wording>, translate-top64
        ("model_id", pa.string()),
        ("n_tokens", pa.int32()),  # tokens of `summary` (core.textclean.count_tokens)
        ("max_tokens", pa.int32()),  # the cut (the paper's 64 or 128)
        ("text", pa.string()),  # the enriched text in the paper's format
        ("source_sha1", pa.string()),  # sha1 of the exact text sent (changes when the document does)
    ]
)

REJECTS = pa.schema(
    [
        ("key", pa.string()),  # DOI, URL or file:line — whatever identifies the record
        ("stage", pa.string()),
        ("reason", pa.string()),  # a short, stable, countable code
        ("detail", pa.string()),  # human-readable explanation
        ("source", pa.string()),  # input file (or URL) it came from
        ("raw", pa.string()),  # an excerpt of the raw record (capped)
    ]
)

# An id-only release (`RELEASE/ids/split=*/`): labels and text hashes, no text.
RELEASE_IDS = pa.schema(
    [
        ("doi", pa.string()),
        ("split", pa.string()),  # train / idt / odt / none
        ("language", pa.string()),
        ("language_prob", pa.float32()),
        ("categories", pa.list_(pa.string())),
        ("year", pa.int32()),
        ("text_source", pa.string()),
        # sha256 (hex) of the UTF-8 text; null when the build had no such text.
        ("title_sha256", pa.string()),
        ("abstract_sha256", pa.string()),
        ("content_sha256", pa.string()),
        ("n_tokens_title", pa.int32()),
        ("n_tokens_abstract", pa.int32()),
        ("n_tokens_content", pa.int32()),
    ]
)

MISMATCHES = pa.schema(
    [
        ("doi", pa.string()),
        ("split", pa.string()),
        ("field", pa.string()),  # title / abstract / content / language / document
        ("outcome", pa.string()),  # no_document / missing / different / unexpected
        ("expected", pa.string()),  # release hash (or label)
        ("rebuilt", pa.string()),  # rebuilt hash (or label)
    ]
)

# `contexts` (after split): one row per sentence of a paper's full text with at least one
# citation marker resolved to a DOI through the paper's Crossref reference list
# (openmsd_build/contexts). One entry of `markers` per cited item ([3, 7] is two): its span in
# the sentence, its style (numeric / superscript / author_year / narrative), what it names
# (number, or surname + year + suffix), the reference it matched (1-based order in the
# deposited list, and `key`), the cited DOI, the method (number_position / author_year /
# author_year_suffix_order / author_year_unstructured) and, when no DOI came of it, the reason
# (no_reference_list / number_out_of_range / author_year_ambiguous / author_year_no_match /
# reference_without_doi).
CONTEXT_MARKER_STRUCT = pa.struct(
    [
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("text", pa.string()),
        ("style", pa.string()),
        ("number", pa.int32()),
        ("surname", pa.string()),
        ("year", pa.int32()),
        ("suffix", pa.string()),
        ("reference_order", pa.int32()),
        ("reference_key", pa.string()),
        ("cited_doi", pa.string()),
        ("method", pa.string()),
        ("reason", pa.string()),
    ]
)

CONTEXTS = pa.schema(
    [
        ("citing_doi", pa.string()),
        ("sentence_index", pa.int32()),  # position among the document's sentences
        ("sentence", pa.string()),
        # the sentence's language (CLD3 on it without its markers, when reliable), else the
        # citing document's (contexts/extract.py: sentence_language)
        ("language", pa.string()),
        ("cited_dois", pa.list_(pa.string())),  # distinct resolved DOIs, in marker order
        ("markers", pa.list_(CONTEXT_MARKER_STRUCT)),
        ("n_markers", pa.int32()),
        ("n_resolved", pa.int32()),
    ]
)

SCHEMAS = {
    "papers": PAPERS,
    "fetch": FETCH,
    "documents": DOCUMENTS,
    "citations": CITATIONS,
    "splits": SPLITS,
    "pairs": PAIRS,
    "contexts": CONTEXTS,
    "negatives": NEGATIVES,
    "mixes": MIXES,
    "enriched": ENRICHED,
    "rejects": REJECTS,
    "release_ids": RELEASE_IDS,
    "mismatches": MISMATCHES,
}
