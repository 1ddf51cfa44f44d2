"""The Hugging Face backend: loading, tokenizer fixes, stopping, batching, GGUF files and the bridge to the engine."""
