"""pyzenoh.router"""
