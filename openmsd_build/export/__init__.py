"""`export`: BEIR / MTEB retrieval tasks, trainer pairs and triplets (`trainer`) and a
Hugging Face dataset layout and card (`hf_dataset`)."""
