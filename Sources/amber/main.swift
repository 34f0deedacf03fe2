import Amber
print(Amber.version)
