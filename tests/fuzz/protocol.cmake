# Protocol fuzz targets: request header + body decoding (every API/version), response body
# decoding, and record batch parsing/iteration. Decoded messages are re-encoded and decoded
# again; any difference aborts (a codec asymmetry is a bug even without a crash).
shale_fuzz_target(fuzz_protocol_request SOURCES fuzz_protocol_request.cc LIBS shale_protocol)
shale_fuzz_target(fuzz_protocol_response SOURCES fuzz_protocol_response.cc LIBS shale_protocol)
shale_fuzz_target(fuzz_record_batch SOURCES fuzz_record_batch.cc LIBS shale_protocol)
