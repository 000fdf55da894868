"""What would fix it: remedies measured on the data, the remedy matrix, the ANN frontier, the chunking sweep, fine-tuning, filter recall, comparisons, model choice."""
