"""Stage 4, `split`: assign every linked paper to train / IDT / ODT (`assign`) -> `OUT/splits/`."""
