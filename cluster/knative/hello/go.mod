module kinetic.local/hello

go 1.24
