"""pyzenoh.keyexpr"""
