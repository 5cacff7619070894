"""Model loading, prompt formats, the decode loop, KV caches and memory: no Qt."""
