"""pyzenoh.routing"""
