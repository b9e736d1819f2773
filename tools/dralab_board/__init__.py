"""dralab-board: the instructor's live GPU board of the DRA lab, in a browser.

A small aiohttp server on a lab node. It keeps ONE watch per resource kind
(list, then watch from the list's resourceVersion, list again when the API
says the version is too old), rebuilds the board (plugins/module_utils/
board/state.py) a moment after each change, and pushes it to every browser as
a server-sent event: a hundred browsers cost the API server nothing more than
one. The page is plugins/module_utils/board/page.py, the same one the health
check writes as a snapshot. The wheel of can-has-gpu carries it.
"""

__version__ = "0.1.0"
