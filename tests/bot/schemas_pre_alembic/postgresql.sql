-- The bot schema as bot/db.py created it before migrations existed (create_all), PostgreSQL.
CREATE TABLE deliveries (
	id VARCHAR(100) NOT NULL, 
	event VARCHAR(64) NOT NULL, 
	action VARCHAR(64), 
	status VARCHAR(16) NOT NULL, 
	outcome VARCHAR(500) NOT NULL, 
	job_id INTEGER, 
	repo VARCHAR(200), 
	pr INTEGER, 
	received_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE evaluations (
	id SERIAL NOT NULL, 
	repo VARCHAR(200) NOT NULL, 
	number INTEGER NOT NULL, 
	head_sha VARCHAR(40) NOT NULL, 
	scorer_version VARCHAR(40) NOT NULL, 
	author VARCHAR(100) NOT NULL, 
	trigger VARCHAR(32), 
	evaluated_at VARCHAR(40) NOT NULL, 
	overall_score INTEGER NOT NULL, 
	overall_band VARCHAR(16) NOT NULL, 
	agent_performance INTEGER NOT NULL, 
	task_outcome_quality INTEGER NOT NULL, 
	process_compliance INTEGER NOT NULL, 
	judge_status VARCHAR(16), 
	job_id INTEGER, 
	comment_url VARCHAR(500), 
	comment_signature VARCHAR(64), 
	result_json TEXT NOT NULL, 
	stored_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_evaluations_key ON evaluations (repo, number, head_sha, scorer_version);
CREATE INDEX ix_evaluations_author ON evaluations (repo, author);
CREATE TABLE installation_events (
	id SERIAL NOT NULL, 
	delivery_id VARCHAR(100) NOT NULL, 
	installation_id BIGINT NOT NULL, 
	action VARCHAR(64) NOT NULL, 
	account VARCHAR(100), 
	repositories_added TEXT NOT NULL, 
	repositories_removed TEXT NOT NULL, 
	received_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE jobs (
	id SERIAL NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	repo VARCHAR(200) NOT NULL, 
	number INTEGER NOT NULL, 
	head_sha VARCHAR(40), 
	installation_id BIGINT, 
	trigger VARCHAR(32) NOT NULL, 
	comment_id BIGINT, 
	commenter VARCHAR(100), 
	status VARCHAR(16) NOT NULL, 
	attempts INTEGER NOT NULL, 
	max_attempts INTEGER NOT NULL, 
	triggers INTEGER NOT NULL, 
	run_after FLOAT NOT NULL, 
	lease_until FLOAT, 
	leased_by VARCHAR(200), 
	last_error TEXT, 
	note TEXT, 
	delivery_id VARCHAR(100), 
	parent_id INTEGER, 
	created_at FLOAT NOT NULL, 
	updated_at FLOAT NOT NULL, 
	finished_at FLOAT, 
	PRIMARY KEY (id)
);
CREATE UNIQUE INDEX uq_jobs_running_pr ON jobs (repo, number) WHERE status = 'running';
CREATE UNIQUE INDEX uq_jobs_command_comment ON jobs (repo, number, comment_id) WHERE kind = 'command';
CREATE INDEX ix_jobs_pr ON jobs (repo, number);
CREATE UNIQUE INDEX uq_jobs_pending_eval ON jobs (repo, number, head_sha) WHERE kind = 'evaluate' AND status IN ('queued', 'running');
CREATE INDEX ix_jobs_ready ON jobs (status, run_after);
CREATE TABLE judge_cache (
	key VARCHAR(200) NOT NULL, 
	value TEXT NOT NULL, 
	stored_at FLOAT NOT NULL, 
	PRIMARY KEY (key)
);
