"""Paper Mario: The Thousand-Year Door character and object models (with their TPL textures)."""
