CREATE TABLE orders (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now());
