"""Language-model providers behind one port."""
