"""The device side without a device. In: an ONNX model or options. Out: dump configs (acljson) and simulated device
dumps with a compiler-style graph JSON (simulate).
"""
