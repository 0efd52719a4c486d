"""The HTTP connection under the app: a request head read within its
limits (``request_head``) and what a body leaves on the wire (``wire``)."""
