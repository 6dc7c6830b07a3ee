"""pyzenoh.transport"""
