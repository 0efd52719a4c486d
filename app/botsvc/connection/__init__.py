"""The HTTP connection under the app: a request head read within its
limits (``request_head``), the sockets of botsvc's gunicorn worker
(``sockets``), a body that has not arrived parking its request (``body``),
and what a body leaves on the wire (``wire``)."""
