"""The embedding model: the interface Mnemo uses and the local GGUF model (llama.cpp),
reading GGUF metadata, converting a sentence-transformers model, and the model catalog."""
