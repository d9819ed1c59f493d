"""`--fetch`, read once: `FetchSpec.parse` turns the flag's text into the one typed value the
command, the pipeline and the DoFns share, so no module spells `startswith("warc:")` again.

The forms are listed in `FORMS` (a bare word, or a `prefix:` followed by comma-separated
globs); adding a form is one entry there and, where it differs, one property below.
"""

from __future__ import annotations

from dataclasses import dataclass

from openmsd_build.core.errors import UserError

# form -> (what it means, whether it takes globs after "form:")
FORMS: dict[str, tuple[str, bool]] = {
    "none": ("metadata only", False),
    "http": ("live, polite", False),
    "warc": ("offline from WARC archives", True),
    "cc-index": ("offline from a Common Crawl columnar-index extract (Parquet)", True),
    "local": ("pages and PDFs on disk: FOLDER (files named after the DOI) or FOLDER@MANIFEST", True),
}
# What follows `prefix:` in the help, where it is not comma-separated globs.
ARGUMENTS = {"local": "FOLDER[@MANIFEST]"}


@dataclass(frozen=True)
class FetchSpec:
    """One reading of `--fetch`: `mode` (a key of `FORMS`) and the globs given after it."""

    mode: str
    globs: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | FetchSpec) -> FetchSpec:
        """`none`, `http`, `warc:GLOB[,GLOB]` or `cc-index:GLOB[,GLOB]`; a UserError naming
        the forms otherwise."""
        if isinstance(text, FetchSpec):
            return text
        mode, colon, rest = text.partition(":")
        takes_globs = FORMS.get(mode, (None, None))[1]
        globs = tuple(g for g in rest.split(",") if g)
        if takes_globs is None or bool(colon) != takes_globs or (takes_globs and not globs):
            raise UserError(f"--fetch must be {usage()}, not {text!r}")
        return cls(mode, globs)

    def __str__(self) -> str:
        """The flag's spelling (stats, release config, logs)."""
        return f"{self.mode}:{','.join(self.globs)}" if self.globs else self.mode

    @property
    def fetches(self) -> bool:
        """Pages and PDFs are read at all (not metadata only)."""
        return self.mode != "none"

    @property
    def live(self) -> bool:
        """Pages are fetched from the web (and archived to `OUT/warc/`, the resume store)."""
        return self.mode == "http"

    @property
    def local(self) -> bool:
        """Pages and PDFs are read from a folder on disk (`fetch.local_files`)."""
        return self.mode == "local"

    @property
    def archive_kind(self) -> str | None:
        """How the files of `globs` are indexed (`IndexArchive`): `warc` or `cc-index`."""
        return self.mode if self.mode in ("warc", "cc-index") else None


def usage() -> str:
    """The forms, for help texts and errors."""
    return " | ".join(f"{form}:{ARGUMENTS.get(form, 'GLOB')}" if globs else form
                      for form, (_what, globs) in FORMS.items())
