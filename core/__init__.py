"""The foundation every websift package stands on: errors, the data directory, safe file I/O.

``core`` imports nothing of websift's; every other package may import it.
"""
