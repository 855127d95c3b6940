// Intentionally empty: lets a library target exist before its folder has sources.
