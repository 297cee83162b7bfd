# The NVMe/TCP protocol layer (src/nvme-tcp/): the PDU codec on its own.
TESTS += test_tcp_pdu
test_tcp_pdu_SRCS := tests/nvme-tcp/test_pdu.c src/nvme-tcp/pdu.c
test_tcp_pdu_LDLIBS := -lcriterion -lisal
