"""The logic behind the OpenFaaS functions emnist-setup and emnist-train, free of any web framework.

Handlers parse the request, call one function here and format what it returns: (HTTP status, JSON).
Errors are raised as faasgd errors; each carries its HTTP status (400, 404, 502, 503, 504, 500).
"""
