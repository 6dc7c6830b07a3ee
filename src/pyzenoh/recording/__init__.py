"""pyzenoh.recording"""
