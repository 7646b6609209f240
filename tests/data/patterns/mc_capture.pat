double: add(%x, %x)
