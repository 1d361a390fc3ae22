"""URL converters of the API's routes."""

from __future__ import annotations

from werkzeug.routing import PathConverter


class ArtifactPath(PathConverter):
    """An artifact's path as sent, a leading `/` included (`.../artifacts//etc/passwd`, or
    `%2F`): werkzeug's `path` takes none, so it merged the slashes and answered a redirect
    with an HTML body; this way the view refuses the path with the API's JSON error."""

    regex = "[\\s\\S]+"  # . would stop at a newline, which a file name may hold
    part_isolating = False  # the path spans segments, as `path` does


CONVERTERS = {"artifact_path": ArtifactPath}
