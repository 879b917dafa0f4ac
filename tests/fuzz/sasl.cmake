# SASL fuzz target: the PLAIN, JAAS, base64 and SCRAM credential parsers and the SCRAM server
# exchange (security/sasl.h) on random bytes.
shale_fuzz_target(fuzz_sasl SOURCES fuzz_sasl.cc LIBS shale_security)
