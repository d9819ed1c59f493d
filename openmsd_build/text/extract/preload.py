"""Imported once by the extractor children's fork server (`pool.PRELOAD`), before it forks
any child: the extractors, document building and their heavy dependencies, and trafilatura's
first-use work (`landing.warm_up`), so no child pays them, and none inside a document's time
limit. Importing it anywhere else only costs the imports.
"""

from __future__ import annotations

import lxml.html  # noqa: F401 - imported for the children
import pypdfium2  # noqa: F401
import trafilatura  # noqa: F401

from openmsd_build.core import language  # noqa: F401
from openmsd_build.text import documents  # noqa: F401
from openmsd_build.text.extract import landing, pdf  # noqa: F401

landing.warm_up()
