"""Packaging for openmsd-build.

`pipelines/` and `schemas/` live at the top of the repository (so a reader finds the stage
wiring and the table contracts at once) and are linked into the package as
`openmsd_build/pipelines` and `openmsd_build/schemas` (symbolic links), so that Beam workers
on Dataflow or Flink import one package, and a checkout's `openmsd_build/` is complete: a
command started from the repository root imports the same modules as the installed package.
"""

from setuptools import find_packages, setup

VERSION = "0.1.0"

INSTALL_REQUIRES = [
    "apache-beam>=2.60,<3",
    "pyarrow>=15,<27",
    "polars>=1.10,<3",
    "trafilatura>=1.12,<3",
    # What the code imports directly, declared (not left to other packages' extras):
    # lxml's HTML cleaner moved to lxml_html_clean, which trafilatura's dependency jusText
    # needs and which older pips do not install through the `lxml[html_clean]` extra.
    "lxml>=5,<7",
    "lxml_html_clean>=0.1,<1",
    # trafilatura's fallback extractor; `landing.warm_up` hands its stoplist cache a set
    "justext>=3.0.2,<4",
    "urllib3>=2.1,<3",  # HTTPResponse.read1 (enrich reads answers under one deadline)
    "idna>=3,<4",
    "certifi>=2023.7",
    "numpy>=1.26,<3",
    "google-cloud-storage>=2.10,<4",
    # CLD3 language identification: cld3-py ships wheels that install the `gcld3` module;
    # upstream `gcld3` needs protoc to build from source.
    "cld3-py>=3.0,<4",
    "pypdfium2>=4.20,<6",
    "warcio>=1.7,<2",
    "matplotlib>=3.7,<4",
    "orjson>=3.9,<4",
    "bm25s>=0.2,<1",
    # sparse document-term matrices: the large-pool BM25 (evaluate/sparse_bm25.py)
    "scipy>=1.11,<2",
]

setup(
    name="openmsd-build",
    version=VERSION,
    description="Apache Beam pipelines that rebuild OpenMSD-style multilingual scientific-document datasets",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11,<3.13",
    packages=find_packages(include=["openmsd_build", "openmsd_build.*"]),
    install_requires=INSTALL_REQUIRES,
    extras_require={
        "test": [
            "pytest>=7.4",
            "pytest-timeout>=2.2",
            "hypothesis>=6.90",
            "ruff>=0.5",
            "datasets>=2.18",
            "gcp-storage-emulator>=2024.8.3",
            # the reference implementation the evaluation metrics are checked against
            # (trec_eval's C code in a wheel; nothing is downloaded at run time)
            "pytrec-eval-terrier>=0.5.6",
            # the simplest BM25 alternative bench/eval_bench.py times side by side
            "rank-bm25>=0.2.2",
        ],
        # local encoder folders for `evaluate-pools --encoder` (never downloaded)
        "encoders": [
            "sentence-transformers>=3",
            "model2vec>=0.3",
        ],
        "gcp": [
            "apache-beam[gcp]>=2.60,<3",
            "gcp-storage-emulator>=2024.8.3",
        ],
    },
    entry_points={"console_scripts": ["openmsd-build=openmsd_build.cli:console_main"]},
)
