"""ONNX models -> ground truth. In: a model and its inputs. Out: every node's output as .npy (golden), the model's order, value types and subgraphs for the stages that replay or lower it."""
