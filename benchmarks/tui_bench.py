"""TUI figures (placeholder until the app is measured)."""


class Unavailable(Exception):
    pass


async def run(bench):
    raise Unavailable("not written yet")
