"""Link security: TLS contexts (tls.py) and usrpwd authentication (usrpwd.py).

Access control is a routing rule and lives with the routing core
(:mod:`pyzenoh.routing.access_control`).
"""
