"""Slow reference implementations the tests compare the package with (never imported by the
package): the per-prefix model engine of earlier versions, element-by-element exact rationals
and one cone program per key."""
