"""pyzenoh.session"""
