"""Imported only by the node's fork server as it starts (the first of ``children._STAGES``), never by the supervisor.

The server ignores the stop signals (SIGTERM, SIGHUP; multiprocessing already makes it ignore SIGINT). One sent to
the node's whole process group or cgroup ('systemctl stop', a closed terminal's hang-up passed on by the shell) would
otherwise kill the server before the supervisor's drain, and the supervisor, which learns of its children's exits
through the server, would take the draining children for dead and exit before them. The server still ends with the
supervisor (it reads EOF from it) and by SIGKILL.
"""

from __future__ import annotations

import signal

from webtrawl.node.logs import STOP_SIGNALS

for _stop_signal in STOP_SIGNALS:
    signal.signal(_stop_signal, signal.SIG_IGN)
