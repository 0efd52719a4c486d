"""The method catalogue and what its entries are made of: the entry type
(``entry``), reading a request body (``body``), the request fields
(``validation``) and the result schemas (``results``)."""
