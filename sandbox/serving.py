"""What every sandbox server shares: it is a context manager that stops it at the block's end."""

from __future__ import annotations

from typing import Self


class StopOnExit:
    """``with serve(...) as server:`` calls ``server.stop()`` when the block ends, however it ends."""

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
