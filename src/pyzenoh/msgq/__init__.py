"""pyzenoh.msgq"""
