"""How each kind of claim is checked: one module per kind (equality, eviction bounds, routing bounds)."""
