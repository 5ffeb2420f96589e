"""Side-by-side benchmarks: streamwire ("ours") against the official client ("theirs")."""
