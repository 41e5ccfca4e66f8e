// Module placeholder; see README for the module map.
