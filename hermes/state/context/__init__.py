"""A conversation's messages as hermes holds them, and the rules a list of them keeps.

message.py     ``Message`` and its wire form, made in one place
wellformed.py  a context a provider accepts (invariant 15): check, normalise, repair
anchor_index.py  a summary's anchor index as it is written, read back, and kept (invariant 14)
"""
