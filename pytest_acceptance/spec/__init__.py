"""Reading a spec: a bounded read of the file, the format that recognises it, its criteria."""
