module tec

go 1.26.8
