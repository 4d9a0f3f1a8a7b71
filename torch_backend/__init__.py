"""Independent numeric re-check of lnproofs' theorems and certificates with PyTorch."""
