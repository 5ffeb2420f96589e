"""streamwire.compat against the official client: programs run with both modules (issue 26)."""
