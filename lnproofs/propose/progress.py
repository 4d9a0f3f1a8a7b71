"""Progress of a certification, counted in keys: a tqdm bar on standard error when asked for."""

from __future__ import annotations

import sys

__all__ = ["KeyProgress"]


class KeyProgress:
    """A tqdm bar on stderr counting keys (the one progress style of the package); drawn
    only when ``enabled``, closed when every key is counted."""

    def __init__(self, total: int, enabled: bool, label: str = "certify"):
        self.bar = None  # no bar at all when not drawn: a small certification pays nothing for it
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="key", file=sys.stderr, dynamic_ncols=True, leave=False)
        self.done, self.total = 0, total

    def add(self, count: int) -> None:
        self.done += count
        if self.bar is None:
            return
        self.bar.update(count)
        if self.done >= self.total:
            self.bar.refresh()  # the final count is drawn before the bar is cleared
            self.bar.close()
