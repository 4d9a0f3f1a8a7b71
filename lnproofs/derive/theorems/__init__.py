"""The theorem modules, one per idea: projection, decomposition, sphere, ellipsoid,
RMSNorm, the attention consequences and the query sets that cover every direction.  Each module has
``theorems(n=None, convention="torch")``; :mod:`lnproofs.derive.registry` collects them."""
