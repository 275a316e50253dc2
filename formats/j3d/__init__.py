"""Nintendo JSystem (J3D) animations (BCK, BTK, BRK, BTP, BPK) and material sets (BMT)."""
