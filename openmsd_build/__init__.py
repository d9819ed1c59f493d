"""openmsd-build: rebuild OpenMSD-style multilingual scientific-document datasets with Apache Beam."""

__version__ = "0.1.0"
