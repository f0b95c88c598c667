"""Imported only by the node's fork server as it starts (the first of ``children._STAGES``), never by the supervisor.

The server ignores SIGTERM, as multiprocessing already makes it ignore SIGINT. A SIGTERM sent to the node's whole
process group or cgroup ('systemctl stop') would otherwise kill the server before the supervisor's drain, and the
supervisor, which learns of its children's exits through the server, would take the draining children for dead and
exit before them. The server still ends with the supervisor (it reads EOF from it) and by SIGKILL.
"""

from __future__ import annotations

import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)
