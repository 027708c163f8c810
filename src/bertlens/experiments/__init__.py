"""One orchestration module per command: sweep, linguistic, compare, longdoc, geometry, finetune, contrastive."""
