"""pyzenoh.pipeline"""
