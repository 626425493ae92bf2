"""A real-PR corpus: the AIDev-pop dataset loader and a REST replay of it (see ``replay``)."""
